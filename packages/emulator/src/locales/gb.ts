/** Words for contacts from the United Kingdom (en-GB). */
import type { LocaleWords } from '../locale-words.js';

export const GB: LocaleWords = {
  country: 'GB',
  weight: 10,
  tld: 'co.uk',
  linkGreeting: "Hello! I'd like to hear more about",
  firstNames: [
    'Oliver', 'George', 'Harry', 'Jack', 'Charlie', 'Thomas', 'James', 'William', 'Henry', 'Alfie',
    'Oscar', 'Archie', 'Freddie', 'Leo', 'Alexander', 'Joshua', 'Samuel', 'Daniel', 'Callum', 'Liam',
    'Rhys', 'Connor', 'Jamie', 'Ewan', 'Owen', 'Stuart', 'Graham', 'Ian', 'Neil', 'Gareth',
    'Mohammed', 'Arjun', 'Ravi', 'Tom', 'Ben', 'Sam', 'Joe', 'Rory', 'Finn', 'Hamish',
    'Olivia', 'Amelia', 'Isla', 'Ava', 'Emily', 'Sophie', 'Grace', 'Lily', 'Freya', 'Ella',
    'Charlotte', 'Poppy', 'Evie', 'Chloe', 'Jessica', 'Hannah', 'Lucy', 'Katie', 'Holly', 'Eleanor',
    'Rebecca', 'Gemma', 'Kirsty', 'Fiona', 'Siobhan', 'Claire', 'Rachel', 'Helen', 'Joanne', 'Victoria',
    'Priya', 'Aisha', 'Zara', 'Imogen', 'Harriet', 'Megan', 'Niamh', 'Caitlin', 'Abigail', 'Rosie',
  ],
  lastNames: [
    'Smith', 'Jones', 'Taylor', 'Brown', 'Williams', 'Wilson', 'Johnson', 'Davies', 'Robinson', 'Wright',
    'Thompson', 'Evans', 'Walker', 'White', 'Roberts', 'Green', 'Hall', 'Wood', 'Jackson', 'Clarke',
    'Patel', 'Khan', 'Lewis', 'James', 'Phillips', 'Mason', 'Mitchell', 'Rose', 'Davis', 'Rodgers',
    'Hughes', 'Edwards', 'Turner', 'Harris', 'Morris', 'Cooper', 'Ward', 'Watson', 'Morgan', 'Hill',
    'Campbell', 'Stewart', 'MacDonald', 'Murray', 'Reid', 'Fraser', 'Kelly', 'Bennett', 'Griffiths', 'Shaw',
    'Lloyd', 'Palmer', 'Holmes', 'Barker', 'Fletcher', 'Knight', 'Owen', 'Marshall', 'Ellis', 'Webb',
  ],
  doubleSurname: 0,
  freeEmailDomains: ['gmail.com', 'outlook.com', 'hotmail.co.uk', 'yahoo.co.uk', 'btinternet.com', 'icloud.com'],
  companyPatterns: ['{last} & {last2}', '{word} {sector}', '{word} {sector} Ltd', '{last} {sector} Ltd', '{last} Group plc', '{word} {sector} Partners', '{last} & Sons'],
  companyWords: ['Thames', 'Albion', 'Crown', 'Highland', 'Kingsway', 'Pennine', 'Oakfield', 'Westgate', 'Castle', 'Brighton', 'Heritage', 'Regent', 'Clyde', 'Severn', 'Mersey', 'Northgate', 'Britannia', 'Hadrian', 'Windsor', 'Avon'],
  sectors: ['Logistics', 'Analytics', 'Consulting', 'Foods', 'Engineering', 'Haulage', 'Healthcare', 'Training', 'Estates', 'Supplies', 'Insurance', 'Accountancy', 'Marketing', 'Energy', 'Software'],
  jobPatterns: ['{level} {area} {role}', '{area} {role}', 'Head of {area}'],
  roles: ['Manager', 'Director', 'Coordinator', 'Specialist', 'Analyst', 'Lead', 'Executive', 'Consultant', 'Officer'],
  areas: ['Sales', 'Marketing', 'Procurement', 'Finance', 'Operations', 'IT', 'People', 'Logistics', 'Customer Success', 'Product', 'Business Development', 'Legal', 'Partnerships'],
  levels: ['Senior', 'Junior', 'Regional', 'Group'],
  productPatterns: ['{kind}', '{kind} {edition}'],
  productKinds: ['Business Plan', 'Online English Course', 'Tax Advice', 'Car Insurance', 'Sales CRM', 'Payroll Software', 'Annual Membership', 'Boiler Cover', 'Dental Plan', 'Sales Coaching', 'Online MBA', 'Solar Panels', 'Business Card', 'Health Cover', 'Starter Kit', 'Franchise Scheme', 'Time Tracking', 'Card Reader', 'Excel Course', 'Home Insurance'],
  editions: ['Pro', 'Plus', 'Premium', 'Essentials', 'Business'],
  headlinePatterns: [
    'Chat to an expert on WhatsApp', '{product}: get a free quote', 'Save {n}% on {product}', 'Discover {product}',
    'Get {product} today', 'Last places: {product}', '{product}: spread the cost over 12 months', 'Try {product} for free',
    'Get your {product} price in minutes', 'Quick answers about {product}', '{n}% off {product} this week', 'Questions about {product}? Message us',
  ],
};
